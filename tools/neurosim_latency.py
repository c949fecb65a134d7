"""NeuroSim V1.4 (neurosim/DNN_NeuroSim_V1.4 @9e6742c) buffer and interconnect latency of its
release test (VGG-8, 8-bit, 128x128 RRAM subarrays, numRowParallel 128), evaluated from the
formulas of its Chip.cpp / Tile.cpp / ProcessingUnit.cpp / Buffer.cpp / HTree.cpp / XYBus.cpp
(docs/cost.md "NeuroSim", the TOPS row). The "meas" columns are the per-layer latencies of
NeuroSim 9e6742c rebuilt and run on the release test settings; the formulas reproduce them.
Run: python3 tools/neurosim_latency.py"""
import math
clk=2.2312  # ns
net=[(32,32,3,3,3,128,0,1),(32,32,128,3,3,128,1,1),(16,16,128,3,3,256,0,1),(16,16,256,3,3,256,1,1),
     (8,8,256,3,3,512,0,1),(8,8,512,3,3,512,1,1),(1,1,8192,1,1,1024,0,1),(1,1,1024,1,1,10,0,1)]
NM=[0,1,1,1,1,1,0,0]
spd=[(16,1),(16,1),(4,1),(4,1),(2,1),(1,1),(1,1),(1,8)]          # speedUpEachLayer row,col
tiles=[(2,1),(4,2),(1,4),(2,4),(1,8),(1,8),(8,8),(1,1)]           # numTileEachLayer row,col
meas_buf=[136858,53014.9,12265.4,17331,3420.43,5627.08,524.33,305.88]
meas_ic=[47868.9,26417.4,17473.7,17098.2,5919.37,11048.9,306.79,261.00]
nb=8; cps=8; TROW,TCOL=11,10          # totalnumTileRow/Col (103 tiles)
GBW=1089; GCORE=min(71,math.ceil(GBW/128))   # =9
def pe_buf(rows,cols,niv):   # ProcessingUnit.cpp:566-567 / 541-542 (int arithmetic), DFF sync: cycles=numRead
    return (rows*niv)//1024 + (((cols//cps)*20*niv)//nb)//352
res=[]
for l,(H,W,C,K,_,Co,mp,s) in enumerate(net):
    niv=((H-K+1)//s)*((W-K+1)//s); tniv=niv*nb
    R=C*K*K; Cl=Co*cps; su=spd[l][0]*spd[l][1]
    if not NM[l]:
        tr=min(1024,R); tc=min(1024,Cl)
        if su>1 and not (spd[l][0]>=2 and spd[l][1]>=2):   # Tile.cpp:367-418 partial dup
            pe=max(pe_buf(min(512,tr-i*512),min(512,tc-j*512),tniv) for i in range(math.ceil(tr/512)) for j in range(math.ceil(tc/512)))/su
        else:                                              # Tile.cpp:429-455 no dup (NMpe=true PE)
            pe=pe_buf(tr//2,tc,tniv)
        inb=tr*tniv; outb=math.ceil(tc/cps)*(1+24)*tniv/nb  # Tile.cpp:498,512
        tb=(inb/32)/2 + (outb/50)/1                        # in: 2 cores(min(2,8)); out: 1 core, width 50
        ht=(inb+outb)/256
        gout=R*nb*niv; gin=math.ceil(Cl/cps)*nb*niv/(4 if mp else 1)   # Chip.cpp:744-745
    else:
        tr=R; tc=min(512,Cl)
        pe=pe_buf(tr//9,tc,tniv)/su
        inb=tr*tniv/3; outb=math.ceil(tc/cps)*(4+24)*tniv/nb
        tb=(inb/32)/9 + (outb/32)/4
        ht=(inb+outb)/1152
        gout=R*nb*niv/K; gin=math.ceil(Cl/cps)*nb*niv/(4 if mp else 1)
    gb=(gout/128+gin/128)/2/GCORE
    bus=math.ceil(gout/GBW*TROW/tiles[l][0])+math.ceil(gin/GBW*TCOL/tiles[l][1])
    buf=(pe+tb+gb)*clk; ic=(ht+bus)*clk
    res.append((l+1,niv,pe*clk,tb*clk,gb*clk,buf,meas_buf[l],ht*clk,bus*clk,ic,meas_ic[l]))
print("L niv PEbuf tilebuf glbbuf | BUF model/meas | Htree XYbus | IC model/meas")
for r in res:
    print("%d %4d %8.1f %9.1f %7.1f | %9.1f %9.1f (%+.3f%%) | %8.1f %8.1f | %8.1f %8.1f (%+.3f%%)"%(r[0],r[1],r[2],r[3],r[4],r[5],r[6],100*(r[5]/r[6]-1),r[7],r[8],r[9],r[10],100*(r[9]/r[10]-1)))
